"""Page scripts: the JavaScript the browser tests evaluate in the page (``page.evaluate(SCRIPT, arg)``), shared by
more than one test module. A module's own scripts stay in the module."""

# A plot's plotly element by the elem_id of its gr.Plot
GD = "(id) => document.querySelector(`#${id} .js-plotly-plot`)"
# Whether that plot holds a heatmap now
HAS_HEATMAP = f"(id) => {{ const gd = ({GD})(id); return !!(gd && gd.data?.some(t => t.type === 'heatmap')); }}"
# Its title ('' before it is drawn)
TITLE = f"(id) => {{ const gd = ({GD})(id); return gd && gd.layout && gd.layout.title ? gd.layout.title.text : ''; }}"
# The value of a textbox or number box by elem_id (null when there is none)
VALUE = "(id) => { const e = document.querySelector(`#${id} textarea, #${id} input`); return e ? e.value : null; }"

# Resolves once a plot's tick labels have kept their number and boxes for 10 animation frames and 300 ms (Gradio
# resizes a plot after drawing it, and fonts may still load): a quiet window, not a fixed sleep.
SETTLED = """async (id) => {
    await document.fonts.ready;
    const shape = () => JSON.stringify([...document.querySelectorAll(`#${id} .xtick text, #${id} .ytick text`)]
        .map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }));
    let last = shape(), frames = 0, since = performance.now();
    while (frames < 10 || performance.now() - since < 300) {
        await new Promise((r) => requestAnimationFrame(r));
        const now = shape();
        if (now !== last) { frames = 0; since = performance.now(); last = now; } else frames++;
    }
}"""

# Tick labels of one plot as drawn: their count and how many pairs overlap (boxes intersecting by > 1 px).
LABELS = """(id) => {
    const boxes = (sel) => [...document.querySelectorAll(`#${id} ${sel}`)]
        .map((e) => e.getBoundingClientRect()).filter((r) => r.width > 0 && r.height > 0);
    const overlaps = (rs) => {
        let n = 0;
        for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) {
            const a = rs[i], b = rs[j];
            if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) n++;
        }
        return n;
    };
    const x = boxes('.xtick text'), y = boxes('.ytick text');
    return {x: x.length, y: y.length, xOverlaps: overlaps(x), yOverlaps: overlaps(y)};
}"""

# Whether the tab labelled `name` is the selected one
TAB_SELECTED = ("(name) => [...document.querySelectorAll('[role=tab]')].some(t => t.textContent.trim() === name"
                " && t.getAttribute('aria-selected') === 'true')")
