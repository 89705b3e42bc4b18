"""Server plumbing that never draws: middlewares, the socket fix, preload, admission, uploads, real-run jobs."""
