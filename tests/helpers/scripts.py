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

def still(selector: str, arg: str = "") -> str:
    """A script that resolves once the boxes of the elements ``selector`` finds have kept still for 10 animation frames
    and 300 ms (Gradio resizes a plot after drawing it, and fonts may still load): a quiet window, not a fixed sleep.
    ``selector`` is a JavaScript template literal's body; ``arg`` names the script's argument it may use."""
    return f"""async ({arg}) => {{
    await document.fonts.ready;
    const shape = () => JSON.stringify([...document.querySelectorAll(`{selector}`)]
        .map((e) => {{ const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }}));
    let last = shape(), frames = 0, since = performance.now();
    while (frames < 10 || performance.now() - since < 300) {{
        await new Promise((r) => requestAnimationFrame(r));
        const now = shape();
        if (now !== last) {{ frames = 0; since = performance.now(); last = now; }} else frames++;
    }}
}}"""


# Resolves once a plot's tick labels have kept their number and boxes still (``still``): page.evaluate(SETTLED, id)
SETTLED = still("#${id} .xtick text, #${id} .ytick text", "id")
# Resolves once every figure and SVG text of the page has kept still
FIGURES_STILL = still(".js-plotly-plot .main-svg, svg text")

# Statements for a page script: quad(t), an SVG text's box as drawn (turned with it: slanted tick labels), 1 px in
# from each side; hit(a, b), whether two such boxes meet (no axis of either box separates them)
TEXT_QUADS = """const quad = (t) => {
        const b = t.getBBox(), m = t.getScreenCTM();
        return [[b.x + 1, b.y + 1], [b.x + b.width - 1, b.y + 1], [b.x + b.width - 1, b.y + b.height - 1],
                [b.x + 1, b.y + b.height - 1]].map(([x, y]) => { const q = new DOMPoint(x, y).matrixTransform(m);
                                                                return [q.x, q.y]; });
    };
    const hit = (a, b) => {
        for (const poly of [a, b]) for (let i = 0; i < 4; i++) {
            const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2;
            const along = (q) => q.map(([x, y]) => x * nx + y * ny);
            const pa = along(a), pb = along(b);
            if (Math.max(...pa) <= Math.min(...pb) || Math.max(...pb) <= Math.min(...pa)) return false;
        }
        return true;
    };"""

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
