/* The page script's shared part. The page script is assets/web/page.js and then one file per feature, joined in the
   order of viz.views.page.SCRIPTS into the one script Gradio runs once the page has loaded (launch(js=...)).

   Every file is one function. This one gets the page contract, written once in Python (viz.views.page.PAGE: element
   ids, label patterns, meta names), and returns what the features share; each feature file then gets the contract and
   that, and wires one feature of the page (its comment says which entries of the contract it reads).
     page.layerLabel, page.headLabel   regular expressions that read the layer and the head (1-based) from an
                                       overview cell's row and column labels (viz.heatmaps)

   Messages: a feature tells the server something by writing to a hidden Gradio textbox (send): its .change listener
   does the rest. Every message carries the time, so that a second click on the same thing is a change too. */
(page) => {
  // Tell a hidden Gradio textbox something: its .change listener does the rest.
  const send = (id, value) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) return;
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };

  // The plotly element of a Plot (Gradio's Plot gives it the element id; each new figure comes in a new element).
  const plotOf = (id) => document.querySelector(`#${id} .js-plotly-plot`);

  // An overview cell's layer and head, read off its row and column labels.
  const layerOf = new RegExp(page.layerLabel), headOf = new RegExp(page.headLabel);

  // One MutationObserver for the page: Gradio draws plots late, and anew, so features hook their elements as they
  // appear. onChange(fn): fn runs after every change to the page's elements, in the order the features asked;
  // eachPlot(id, hook): hook(gd) runs once for each new plotly element of the Plot with that id, once plotly has set
  // it up (gd.on: its events).
  const watchers = [];
  new MutationObserver(() => watchers.forEach((watch) => watch()))
    .observe(document.body, {childList: true, subtree: true});
  const onChange = (fn) => { watchers.push(fn); };
  const eachPlot = (id, hook) => {
    const hooked = new WeakSet();
    onChange(() => {
      const gd = plotOf(id);
      if (!gd || !gd.on || hooked.has(gd)) return;
      hooked.add(gd);
      hook(gd);
    });
  };

  return {send, plotOf, layerOf, headOf, onChange, eachPlot};
}
