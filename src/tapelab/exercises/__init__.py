"""One module per notebook; each binds its exercises to short names such as `ex1_2`."""
