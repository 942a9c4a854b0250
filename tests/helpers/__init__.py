"""What the test modules share (a test module never imports another):

    served.py    the app as served: in this process or as `python app.py` (tests/conftest.py's ``serve`` fixture)
    raw_api.py   Gradio's queue protocol over raw HTTP, and valid arguments from the app's own API description
    plotly.py    a figure as it travels: its typed arrays (``bdata``) back as numpy
    browser.py   Debian's Chromium, watched pages, and the steps every browser test takes on a page
    scripts.py   page scripts: the JavaScript the browser tests evaluate in the page
    present.py   presentation mode measured in the page: every text's size and contrast, texts over texts
    layout.py    layout checks measured in the page (no overlaps on a phone or a projector, long sentences)
"""
