"""The local stack: the supervisor and its components, the stack settings and configs, the run
directory's state, and what `vigil up`, `down`, `status`, `chaos` and `drill` drive."""
