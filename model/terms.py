"""The words the model, the figures, the presenters and the app share: kinds of attention, the input limit, the
special pieces. Imports nothing (no torch), so any module may use it; each word is defined here and only here.

Kinds of attention: the three attention sub-layers of §3.1 (Figure 1), in the order of ``AttentionMaps``, of
``AttentionResult``'s arrays and of a head mask's first axis. For each kind, its rows (queries) and columns (keys)
come from:

    encoder_self   source tokens       -> source tokens
    decoder_self   decoder positions   -> decoder positions (masked: row i sees columns <= i)
    cross          decoder positions   -> source tokens (K and V from the encoder output)
"""

KINDS = ("encoder_self", "decoder_self", "cross")

# A source sentence or given translation is cut to this many SentencePiece tokens, EOS included (with a warning);
# Multi30k sentences average ~16 tokens.
MAX_TOKENS = 100

# The widest beam and the largest attention scale any caller may ask for (the app's endpoints, model.translate): a
# beam of 8 already costs 8 decodes; a scale past 100 only saturates the softmax further.
MAX_BEAM = 8
MAX_SCALE = 100.0

# How the begin- and end-of-sentence tokens are shown: <s> is the first decoder position, </s> the last source token.
BOS_PIECE, EOS_PIECE = "<s>", "</s>"

# "▁": SentencePiece's mark on a piece that starts a word ("▁Haus" = " Haus").
WORD_MARKER = "\u2581"
