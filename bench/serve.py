"""The app as served, plus a trivial echo button on the same page and queue: the browser benchmark's floor.

    python -m bench.serve      # like `python app.py` (GRADIO_SERVER_PORT picks the port)

Nothing is added to ``app.py``: ``app.demo`` is rendered inside a new ``gr.Blocks`` (Gradio re-targets its
load events to the new root), and the echo goes through the same queue settings as the app's events.
"""

from __future__ import annotations

import gradio as gr

import app


def echo(text: str) -> str:
    return text


with gr.Blocks(title="attention visualiser + echo (benchmark)", analytics_enabled=False) as bench_demo:
    app.demo.render()
    with gr.Row():
        echo_in = gr.Textbox(label="echo in", elem_id="echo-in")
        echo_btn = gr.Button("echo", elem_id="echo-btn")
        echo_out = gr.Textbox(label="echo out", elem_id="echo-out")
    echo_btn.click(echo, echo_in, echo_out, api_name="echo")

_queue = getattr(app.demo, "_queue", None)  # the app's own queue settings (Gradio keeps them private)
bench_demo.queue(
    default_concurrency_limit=getattr(_queue, "default_concurrency_limit", 2),
    max_size=getattr(_queue, "max_size", 256),
    api_open=bool(getattr(app.demo, "api_open", False)),
)

if __name__ == "__main__":
    bench_demo.launch(share=False, css=app.CSS, js=app.JS, show_error=False)
