"""The app as served, plus a trivial echo button on the same page and queue: the browser benchmark's floor.

    python -m bench.serve      # like `python app.py` (GRADIO_SERVER_PORT picks the port)

Nothing is added to ``app.py``: its ``create_app`` is rendered inside a new ``gr.Blocks`` (Gradio re-targets
its load events to the new root), and ``app.launch`` serves both with the app's queue, script and style.
"""

from __future__ import annotations

import gradio as gr

import app


def echo(text: str) -> str:
    return text


def main() -> None:
    demo = app.create_app(app.load_translator(), serving=True)
    with gr.Blocks(title="attention visualiser + echo (benchmark)", analytics_enabled=False) as bench_demo:
        demo.render()
        with gr.Row():
            echo_in = gr.Textbox(label="echo in", elem_id="echo-in")
            echo_btn = gr.Button("echo", elem_id="echo-btn")
            echo_out = gr.Textbox(label="echo out", elem_id="echo-out")
        echo_btn.click(echo, echo_in, echo_out, api_name="echo")
    app.launch(bench_demo)


if __name__ == "__main__":
    main()
