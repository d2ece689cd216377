"""Where things are, for every test: the repository root, tests/fixtures, traces/ and scripts/ (absolute paths,
whatever folder the test sits in and whatever the working directory)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")
SUPPORT = os.path.join(TESTS, "support")
FIXTURES = os.path.join(TESTS, "fixtures")
PTX_FIXTURES = os.path.join(FIXTURES, "ptx")
TRACES = os.path.join(ROOT, "traces")
SCRIPTS = os.path.join(ROOT, "scripts")
CAPTURE = os.path.join(SCRIPTS, "capture")
FIXTURE_MAKERS = os.path.join(SCRIPTS, "fixtures")
