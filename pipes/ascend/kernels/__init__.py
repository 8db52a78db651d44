"""Reference kernels written against the adapter: the requested cube ping-pong, the hand-written
schedule it replaces (for comparison in the simulator), and a cube→vector cross-core pipeline."""
