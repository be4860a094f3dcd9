"""The parts of `tapelab.guarded`: gradient measurement, step records, retries and the Keras callback.

Import the public names from `tapelab.guarded`; these modules are split by concept to stay small.
"""
