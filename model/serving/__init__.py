"""Serving the model to many users: ``Runs`` (the model-run service the presenters call, one cache bounded in bytes for
every session), the micro-batcher that decodes concurrent requests as one padded batch, and the model process those
batches run in.
"""
