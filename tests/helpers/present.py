"""Presentation mode measured in the page: every visible text at least 16 px as rendered, at a contrast of at least
4.5:1 against what is drawn behind it, and no two texts of a figure over each other or past its figure
(``PRESENT_PROBLEMS``, ``measure``); any other view: the contrast alone. Used by tests/test_browser_axe.py (each tab
in each view) and tests/test_browser_lecture.py (each stop of the lecture, what is on screen).

- a text's size: its computed font size × the scale its SVG is drawn at (Figure 1 is drawn smaller than its
  viewBox on a narrow page), and so for a part of an SVG text in a size of its own (a <tspan>);
- its colour: fill (SVG) or color (HTML), its alpha and every ancestor's opacity laid over the background;
- its background: a halo drawn under an SVG text (a stroke 3 px wide or more); else for HTML the first ancestor
  with a background colour (laid over the ones below it); for SVG text the last shape drawn under its centre in
  paint order (a rect or path with a fill; a heatmap's image is read back pixel by pixel), over the figure's paper
  and the page's background.
"""

from __future__ import annotations

from playwright.sync_api import Page

from helpers.scripts import TEXT_QUADS, still

LEAST_PX, LEAST_CONTRAST = 16, 4.5
STILL = still(".js-plotly-plot .main-svg, svg text, .prose")  # figures, their texts and the Markdown

# What is wrong with the open tab in presentation mode: {texts, smallest, lowest, problems}.
PRESENT_PROBLEMS = """async ([leastPx, leastContrast, onScreen, layout]) => {
    const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.offsetParent);
    const roots = onScreen ? [document.body] : [panel, document.querySelector('[role=tablist]')].filter(Boolean);
    // on screen: what the screen shows (the lecture: above its caption bar, fixed at the bottom, and the bar)
    const bar = document.getElementById('lecture-bar'), floor = bar ? bar.getBoundingClientRect().top : innerHeight;
    const onView = (e, r) => !onScreen || (r.right > 0 && r.left < innerWidth && r.bottom > 0
        && r.top < (bar && bar.contains(e) ? innerHeight : floor));
    const problems = [];
    const parse = (c) => {
        const m = (c || '').match(/rgba?\\(([^)]+)\\)/);
        if (!m) return null;
        const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(parseFloat);
        return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const over = (top, below) => {  // top (alpha a) laid over an opaque colour
        const a = top[3];
        return [0, 1, 2].map((i) => top[i] * a + below[i] * (1 - a)).concat(1);
    };
    const lum = (c) => {
        const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
        return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
    };
    const contrast = (a, b) => {
        const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05);
    };
    const opacity = (e) => { let o = 1; for (; e && e.nodeType === 1; e = e.parentElement || e.parentNode)
        o *= parseFloat(getComputedStyle(e).opacity); return o; };
    const pageBackground = (e) => {  // the HTML backgrounds behind e, laid over each other, opaque
        const layers = [];
        for (let x = e; x && x.nodeType === 1; x = x.parentElement) {
            const c = parse(getComputedStyle(x).backgroundColor);
            if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
        }
        let bg = [255, 255, 255, 1];
        if (!layers.length || layers[layers.length - 1][3] < 1) {
            const c = parse(getComputedStyle(document.documentElement).backgroundColor);
            if (c && c[3] > 0) bg = over(c, bg);
        }
        for (const c of layers.reverse()) bg = over(c, bg);
        return bg;
    };
    const images = new Map();
    const pixel = async (img, x, y) => {  // the colour of a plotly heatmap image at the page point (x, y)
        const href = img.getAttribute('href') || img.getAttribute('xlink:href');
        if (!images.has(href)) images.set(href, new Promise((done) => {
            const i = new Image();
            i.onload = () => { const c = document.createElement('canvas'); c.width = i.width; c.height = i.height;
                               const g = c.getContext('2d'); g.drawImage(i, 0, 0); done([g, i.width, i.height]); };
            i.onerror = () => done(null);
            i.src = href;
        }));
        const got = await images.get(href);
        if (!got) return null;
        const [g, w, h] = got, r = img.getBoundingClientRect();
        const px = Math.min(w - 1, Math.max(0, Math.floor((x - r.left) / r.width * w)));
        const py = Math.min(h - 1, Math.max(0, Math.floor((y - r.top) / r.height * h)));
        const d = g.getImageData(px, py, 1, 1).data;
        return [d[0], d[1], d[2], d[3] / 255];
    };
    const svgBackground = async (t, x, y) => {  // what is drawn under the page point (x, y) in t's figure
        const top = t.closest('.js-plotly-plot') || t.ownerSVGElement;
        let bg = pageBackground(top.parentElement);
        const shapes = [...top.querySelectorAll('svg rect, svg path, svg image, svg circle, svg polygon, svg ellipse')];
        for (const s of shapes) {
            if (s.closest('.hoverlayer, .legend .scrollbar, defs, clipPath, mask, .modebar')) continue;
            const cs = getComputedStyle(s);
            if (cs.display === 'none' || cs.visibility === 'hidden') continue;
            const r = s.getBoundingClientRect();
            if (!(x >= r.left && x <= r.right && y >= r.top && y <= r.bottom)) continue;
            if (s.tagName === 'image') {
                const c = await pixel(s, x, y);
                if (c && c[3] > 0) bg = over([c[0], c[1], c[2], c[3] * opacity(s)], bg);
                continue;
            }
            const fill = parse(cs.fill);
            if (!fill || fill[3] === 0) continue;
            const m = s.getScreenCTM();
            if (!m || !s.isPointInFill) continue;
            const p = new DOMPoint(x, y).matrixTransform(m.inverse());
            if (!s.isPointInFill(p)) continue;
            const a = fill[3] * parseFloat(cs.fillOpacity) * opacity(s);
            if (a > 0) bg = over([fill[0], fill[1], fill[2], a], bg);
        }
        return bg;
    };
    """ + TEXT_QUADS + """
    const where = (e) => e.closest('[id]:not(.js-plotly-plot)')?.id || e.tagName;
    const shown = (e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && onView(e, r)
            && e.checkVisibility({opacityProperty: true, visibilityProperty: true});
    };
    let texts = 0, smallest = Infinity, lowest = Infinity;
    const note = (what, px, ratio) => {
        texts++;
        smallest = Math.min(smallest, px);
        lowest = Math.min(lowest, ratio);
        if (px < leastPx - 0.05) problems.push(`${what}: ${px.toFixed(1)} px`);
        if (ratio < leastContrast) problems.push(`${what}: contrast ${ratio.toFixed(2)}`);
    };
    // SVG text: figures (plotly) and the SVG figures (Figures 1 and 2)
    const figures = new Map();
    const own = (e) => [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    for (const root of roots) for (const e of root.querySelectorAll('svg text, svg tspan')) {
        // a text, or a part of it in a size of its own (plotly's <span style="font-size:…">)
        const t = e.closest('text');
        if (t.closest('.hoverlayer, .modebar, defs') || !t.textContent.trim() || !shown(t)) continue;
        if (e !== t) {
            if (!own(e) || getComputedStyle(e).fontSize === getComputedStyle(t).fontSize) continue;
            const cs = getComputedStyle(e), m = t.getScreenCTM();
            note(`${where(t)}: "${e.textContent.trim().slice(0, 40)}"`, parseFloat(cs.fontSize) * Math.hypot(m.a, m.b),
                 Infinity);
            continue;
        }
        const cs = getComputedStyle(t), m = t.getScreenCTM();
        const px = parseFloat(cs.fontSize) * Math.hypot(m.a, m.b);
        const r = t.getBoundingClientRect();
        let fill = parse(cs.fill);
        if (!fill) continue;  // a text drawn by a gradient or pattern: none here
        // behind it: a halo (a stroke at least 3 px wide drawn under the fill), else what the figure draws there
        const halo = parse(cs.stroke), haloPx = parseFloat(cs.strokeWidth) * Math.hypot(m.a, m.b);
        const bg = halo && halo[3] === 1 && haloPx >= 3 && cs.paintOrder.startsWith('stroke') ? halo
            : await svgBackground(t, r.left + r.width / 2, r.top + r.height / 2);
        const colour = over([fill[0], fill[1], fill[2], fill[3] * parseFloat(cs.fillOpacity) * opacity(t)], bg);
        const text = t.textContent.trim().slice(0, 40);
        note(`${where(t)}: "${text}"`, px, contrast(colour, bg));
        const fig = t.closest('.js-plotly-plot') || t.ownerSVGElement;
        if (!figures.has(fig)) figures.set(fig, []);
        figures.get(fig).push({text, r, q: quad(t)});
    }
    const apart = (a, b) => a.right <= b.left + 1 || b.right <= a.left + 1 || a.bottom <= b.top + 1
        || b.bottom <= a.top + 1;
    for (const [fig, list] of layout ? figures : []) {
        const box = fig.getBoundingClientRect();
        // the figure's label (Gradio's badge over its top-left corner) clear of its texts
        const label = fig.closest('.block')?.querySelector('[data-testid=block-label]');
        const badge = label && shown(label) && label.getBoundingClientRect();
        for (const t of badge ? list : [])
            if (!apart(badge, t.r)) problems.push(`${where(fig)}: its label over "${t.text}"`);
        for (const t of list)
            if (t.r.left < box.left - 1 || t.r.right > box.right + 1 || t.r.top < box.top - 1
                || t.r.bottom > box.bottom + 1)
                problems.push(`${where(fig)}: cut: "${t.text}"`);
        for (let i = 0; i < list.length; i++)
            for (let j = i + 1; j < list.length; j++)
                if (list[i].text && list[j].text && hit(list[i].q, list[j].q))
                    problems.push(`${where(fig)}: "${list[i].text}" over "${list[j].text}"`);
    }
    // HTML text: every text node's element, and what the controls show in their boxes
    const seen = new Set();
    for (const root of roots) {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const e = n.parentElement;
            if (!n.textContent.trim() || !e || e.closest('svg, script, style, .hoverlayer') || seen.has(e)) continue;
            seen.add(e);
            if (!shown(e)) continue;
            const range = document.createRange();
            range.selectNodeContents(n);
            if (![...range.getClientRects()].some((r) => r.width > 0 && r.height > 0)) continue;
            const cs = getComputedStyle(e), c = parse(cs.color), bg = pageBackground(e);
            // (a control switched off, e.g. Reveal before a prediction, is exempt from the contrast: WCAG 1.4.3)
            const off = !!e.closest(':disabled, [aria-disabled=true]');
            note(`${where(e)}: "${n.textContent.trim().slice(0, 40)}"`, parseFloat(cs.fontSize),
                 off ? Infinity : contrast(over([c[0], c[1], c[2], c[3] * opacity(e)], bg), bg));
        }
        for (const e of root.querySelectorAll('textarea, input[type=text], input[type=number], input:not([type])')) {
            if (!e.value.trim() || !shown(e)) continue;
            const cs = getComputedStyle(e), c = parse(cs.color), bg = pageBackground(e);
            note(`${where(e)}: [${e.value.trim().slice(0, 30)}]`, parseFloat(cs.fontSize),
                 contrast(over([c[0], c[1], c[2], c[3] * opacity(e)], bg), bg));
        }
    }
    return {texts, smallest, lowest, problems};
}"""




def measure(page: Page, on_screen: bool = False, least_px: float = LEAST_PX, layout: bool = True) -> dict:
    """What is wrong in presentation mode: {texts, smallest, lowest, problems}. Of the open tab (its panel and the
    tab names), or (``on_screen``) of whatever the screen shows now, the lecture's caption bar included. The contrast
    alone (any other view): ``least_px=0``, ``layout=False`` (no check of texts over each other or past a figure)."""
    return page.evaluate(PRESENT_PROBLEMS, [least_px, LEAST_CONTRAST, on_screen, layout])
