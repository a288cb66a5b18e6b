"""faces: see docs/design.md for what lives here."""
