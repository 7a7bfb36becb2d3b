"""Placeholder: this controller is being written; it registers nothing yet."""

CONTROLLERS: tuple = ()
