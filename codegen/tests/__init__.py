"""Unit tests of the softib IDL generator.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s codegen/tests -t codegen -v
"""

import os
import sys

_CODEGEN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _CODEGEN not in sys.path:
    sys.path.insert(0, _CODEGEN)
