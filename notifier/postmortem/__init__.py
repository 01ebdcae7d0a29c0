"""Postmortems written from what vigil knows about an incident (Google SRE template): see docs/postmortems.md."""

from .render import CONTENT_TYPES, TemplateProblem, gather, render, render_postmortem

__all__ = ["CONTENT_TYPES", "TemplateProblem", "gather", "render", "render_postmortem"]
