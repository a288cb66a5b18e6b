"""The index's table families, one module each; bot/store/index.py joins them into `Index`."""
