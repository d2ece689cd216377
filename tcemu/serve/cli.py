"""`tcemu serve [--port P]`."""
from .params import ServeError
from .server import serve


def _serve(args) -> int:
    if not 0 <= args.port <= 65535:
        raise ServeError("--port", f"{args.port}: a TCP port is 0..65535 (0: any free one)")
    serve(args.port, quiet=args.quiet)
    return 0


def add_parser(sub):
    p = sub.add_parser("serve", help="a local page drawing descriptors, swizzles, TMA, tensor memory, banks, PTX runs")
    p.add_argument("--port", type=int, default=8765, help="TCP port on 127.0.0.1 (0: any free one; default 8765)")
    p.add_argument("--quiet", action="store_true", help="do not log each request")
    p.set_defaults(run=_serve)
