"""The Attention tab's presenters: every layer × head at a glance, one head up close, and what the tab adds around
them.

  maps           the overview and the close-up (``visualise``), the view's checks, the sample sentences, exports
  closeup        the close-up with its focus (a token range, <s> and </s> hidden), for weights or contributions
  focus          the focus itself, and tick labels that never overlap on long sentences
  contributions  the "weights vs contributions" toggle
  projector      the overview's size, the close-up's colour scale, presentation mode
  context        the decoder's one-position shift, and what an exported figure says about itself
  alignment      the alignment (head) view: query and key tokens joined by lines
  teacher        a translation of one's own (teacher forcing): the model's probability of each of its tokens
  classroom      a link or an example opens its view, in the same event as the figures
  share          a view as a link: its state in the page's URL query
  examples       the examples that teach: a sentence, the view that shows something, and what to see
"""
