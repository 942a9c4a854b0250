"""Benchmarks of the attention visualiser: `python -m bench [--quick] [--json PATH] [--sections a,b]`.

Sections (one run measures them all, on whatever device is present):
  browser     click -> overview grid drawn in headless Chromium, against an echo button on the same page
  server      /visualise over raw HTTP at 5, 20 and 60 words
  payload     bytes of the 48-head × 32-token overview figure, and what the app sends for a 32-token sentence
  model       our greedy decode with attention capture against torch.nn.Transformer of the same size
  load        30 concurrent clients × 10 requests: latency, errors, the app's peak RSS
  cold_start  process start -> HTTP 200 -> first visualisation
  capacity    RSS after 50 and 1,000 fresh 100-token sessions; bursts of 30 × 10 and 100 × 3 distinct sentences
              with batching on and off (ATTN_BATCH=0); an example sentence's first and second click (the cache)
"""
