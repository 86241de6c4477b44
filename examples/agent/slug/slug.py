"""Turning titles into URL slugs."""


def slugify(text):
    """Return `text` as a URL slug: lowercase ASCII words joined by single hyphens."""
    raise NotImplementedError("slugify is not written yet")
