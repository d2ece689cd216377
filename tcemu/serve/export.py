"""One self-contained HTML file of a view (`tcemu explain ... --html map.html`): the page's script and style
inline, the view's data embedded as JSON; it draws without a server and loads nothing."""
import json
import re

from ..core.errors import TcemuError
from ..core.validate import show
from .api import descriptor_view
from .server import static_files


def standalone_page(view: str, values: dict, data: dict, command: str = "") -> str:
    files = static_files()
    html = files["index.html"].decode()
    css = files["style.css"].decode()
    payload = json.dumps({"view": view, "values": values, "data": data, "command": command},
                         separators=(",", ":"), allow_nan=False)
    # inside <script>, "</script" or "<!--" would end or bend the element: JSON may spell every "<" as \u003c
    payload = payload.replace("<", "\\u003c")
    html = html.replace('<link rel="stylesheet" href="static/style.css">', f"<style>\n{css}</style>")
    first = True
    for name in re.findall(r'<script src="static/([\w.]+)"></script>', html):  # every script, inline, in order
        js = files[name].decode().replace("</script", "<\\/script")
        embed = f'<script type="application/json" id="tcemu-embed">{payload}</script>\n' if first else ""
        html = html.replace(f'<script src="static/{name}"></script>', f"{embed}<script>\n{js}</script>")
        first = False
    return html


def explain_html(args, path: str) -> dict:
    """Write the descriptor view of `tcemu explain`'s arguments to `path`; returns the view's data. Reads the
    argparse namespace by name, so that options explain does not have are simply absent."""
    values = {"descriptor": str(args.descriptor)}
    for name in ("arch", "dtype", "major", "rows", "k", "instr", "kind", "operand"):
        v = getattr(args, name, None)
        if v is not None:
            values[name] = str(v)
    if values.get("instr") is not None:  # explain takes sm100 from the instruction descriptor
        values["arch"] = "sm100"
    if getattr(args, "sparse", False):
        values["sparse"] = "1"
    data = descriptor_view(values)
    page = standalone_page("descriptor", values, data, data["command"] + f" --html {path}")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:  # the system refuses the file: an error naming the option, not an OSError
        raise TcemuError("html", f"cannot write {show(path)}: {e.strerror or e}") from None
    return data
