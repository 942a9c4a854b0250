"""From-scratch Transformer (Vaswani et al., 2017): model, tokenizer, training and decoding. No UI here."""
