import sys

from pdx.distributed.launch._main import launch

sys.exit(launch())
