"""pdx.metric: Paddle's metrics (Accuracy, Precision, Recall, Auc).

`compute` runs on device inside `pdx.Model`'s compiled step; `update`,
`accumulate` and `reset` keep running totals on the host.
"""

from pdx.metric._metrics import Accuracy
from pdx.metric._metrics import Auc
from pdx.metric._metrics import Metric
from pdx.metric._metrics import Precision
from pdx.metric._metrics import Recall
from pdx.metric._metrics import accuracy

__all__ = ["Accuracy", "Auc", "Metric", "Precision", "Recall", "accuracy"]
