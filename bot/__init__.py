"""gad-bot: 2GAD (Git Active Days x 2, in person-days) for the repositories a Slack workspace cares about."""

__version__ = "0.1.0"
