"""The network and its decoding: the configuration, the Transformer itself, heads and head masks, the tokenizer,
checkpoints and parameter counts, greedy and beam search, and the ``Translator`` (text in, translation and attention
maps out, for one sentence or a padded batch) that every command, probe and the app share.
"""
