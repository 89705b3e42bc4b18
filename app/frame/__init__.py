"""What every page shares: visitor state, the sidebar's widgets, projector mode, safe text, limits, the
simulated pages' settings and cached engine calls."""
