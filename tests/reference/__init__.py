"""Independent pure-Python/numpy reference implementations (test oracles)."""
