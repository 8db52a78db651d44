"""Reference kernels written against the adapter: the requested cube ping-pong and a cube→vector
cross-core pipeline (the hand-written schedule the ping-pong replaces is example material:
examples/ascend_handwritten.py)."""
