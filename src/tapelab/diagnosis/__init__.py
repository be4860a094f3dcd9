"""The parts of `tapelab.diagnose`: an eager op recorder, the path analysis that reads it, the
source facts it quotes, and the state it saves and restores. `tapelab.diagnose` is the public entry."""
