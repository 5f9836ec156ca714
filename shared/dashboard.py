"""The dashboard's files (`dashboard/` in the repository), served as they are.

The page is static: its HTML, scripts (ES modules: `app.js` and the modules it imports, about
one a view) and style sheet are files, with no build step, and it does everything through the
public API with the token the user signs in with. So serving it needs no data and no token,
only the right headers: a Content-Security-Policy that lets the page run nothing but its own
scripts and style from its own origin (no inline script, no `eval`, no other host, no
framing), and no sniffing of content types.

On AWS the files are packaged into the serving functions beside their module
(`infra.bundling.dashboard_code`); in the repository they sit at its top. `directory` finds
whichever is there.
"""

from __future__ import annotations

from pathlib import Path

from shared.errors import NotFound

FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "core.js": "text/javascript; charset=utf-8",
    "charts.js": "text/javascript; charset=utf-8",
    "jobs.js": "text/javascript; charset=utf-8",
    "jobtools.js": "text/javascript; charset=utf-8",
    "job.js": "text/javascript; charset=utf-8",
    "names.js": "text/javascript; charset=utf-8",
    "schedules.js": "text/javascript; charset=utf-8",
    "settings.js": "text/javascript; charset=utf-8",
    "tokens.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
"""Every file there is to serve, and its type: nothing else in the folder is ever read."""

CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
"""Its own files and its own API only; `data:` images for the empty favicon."""

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # Small files: always asked again, so a deploy shows at once.
    "Cache-Control": "no-cache",
}


def directory(module_file: str) -> Path:
    """The `dashboard/` folder for a function module at `module_file`: beside it when packaged,
    else at the repository's top (one level up from `functions/`)."""
    here = Path(module_file).resolve().parent
    packaged = here / "dashboard"
    return packaged if packaged.is_dir() else here.parent / "dashboard"


def read(folder: Path, name: str) -> tuple[str, str]:
    """The file `name` (one of `FILES`) as text, and its content type."""
    if name not in FILES:
        raise NotFound(f"file {name} does not exist")
    return (folder / name).read_text(encoding="utf-8"), FILES[name]
