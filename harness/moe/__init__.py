"""Mixture-of-experts routing: capture, statistics and the routing study."""
