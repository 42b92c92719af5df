"""The ``regcb-stream`` command: VW text in, VW predictions out."""
