"""``python -m regcb_stream``: the ``regcb-stream`` command."""

import sys

from regcb_stream.command.main import main

sys.exit(main())
