"""Load distribution and internal-load analysis for a rigid object held by several effectors."""
