"""Issue 27: README's claim about examples/gemm_mainloop.py holds: change one descriptor field (sbo=512, or
swizzle="64B") and the script exits with status 1, printing what tcemu finds (the writer-vs-reader check, its
hint, the lint)."""
import importlib.util
import os
import subprocess
import sys

import pytest

from paths import ROOT
EXAMPLE = os.path.join(ROOT, "examples", "gemm_mainloop.py")


def _edited(tmp_path, old, new):
    with open(EXAMPLE) as fh:
        text = fh.read()
    lines = text.splitlines(keepends=True)
    hits = [i for i, ln in enumerate(lines) if "GmmaDescriptor(" in ln and old in ln]
    assert len(hits) == 2, "the example's two descriptor lines changed: update this test"
    for i in hits:  # the descriptors of A and B, as a user would edit them
        lines[i] = lines[i].replace(old, new)
    path = tmp_path / "gemm_mainloop_edited.py"
    path.write_text("".join(lines))
    return str(path)


def test_sbo_512_exits_1_with_the_findings(tmp_path):
    path = _edited(tmp_path, "sbo=1024", "sbo=512")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1] == "max |C - C_f64| / max |C_f64| = 1.35e+00"
    assert lines[2] == "FAILED: C is not numpy's product (relative error 1.35e+00 > 1e-05). tcemu finds:"
    assert lines[3] == ("wgmma at k = 0, operand A: 896 of 1024 elements read from the wrong place by "
                        "GmmaDescriptor(start_address=0x400, lbo=0x10, sbo=0x200, base_offset=0, swizzle=128B)")
    assert "  hint: SBO 0x200: this placement needs 0x400" in lines
    assert ("  lint: warning: lbo, sbo: strides overlap: elements A[4, 0] and A[8, 0] share bytes at 0x640 (448 such "
            "pairs) (operand A)") in lines
    assert out.stderr == ""


def test_swizzle_64b_exits_1_naming_the_swizzle(tmp_path, capsys):
    path = _edited(tmp_path, 'swizzle="128B"', 'swizzle="64B"')
    spec = importlib.util.spec_from_file_location("gemm_mainloop_edited", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as e:
        module.main()
    assert e.value.code == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("FAILED: C is not numpy's product (relative error 1.32e+00 > 1e-05)")
    assert lines.count("  hint: swizzle 64B: the writer's placement is 128B") == 2  # A and B
