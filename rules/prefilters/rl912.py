"""RL912's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl912_dbus_signal_keeps_subscriber.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter

# dbus-python's signal subscriptions -> the position of the handler among the arguments.
SUBSCRIBERS = {"add_signal_receiver": 0, "connect_to_signal": 1}


class DBusSignalKeepsSubscriberPrefilter(Prefilter):
    code = "RL912"

    triggers = tuple(SUBSCRIBERS)
