"""Knowledge distillation: a student trained on a teacher's soft labels and features."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import pdx.nn.functional as F
from pdx.nn import Layer

__all__ = ["DistillationLoss", "Distiller", "feature_loss", "soft_label_loss"]


def soft_label_loss(student_logits, teacher_logits, temperature: float = 4.0):
    """KL(softmax(teacher/T) || softmax(student/T)) * T^2, averaged over the batch (Hinton et al.).

    Example:
      >>> import jax.numpy as jnp
      >>> float(soft_label_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3))))
      0.0
    """
    if temperature <= 0:
        raise ValueError(f"temperature={temperature!r} must be positive")
    s = jnp.asarray(student_logits, jnp.float32) / temperature
    t = jax.lax.stop_gradient(jnp.asarray(teacher_logits, jnp.float32)) / temperature
    p_t = jax.nn.softmax(t, axis=-1)
    kl = jnp.sum(p_t * (jax.nn.log_softmax(t, axis=-1) - jax.nn.log_softmax(s, axis=-1)), axis=-1)
    return jnp.mean(kl) * temperature ** 2


def feature_loss(student_feature, teacher_feature, adapter=None, kind: str = "mse"):
    """Distance between an intermediate student feature (through `adapter`, e.g. a Linear or 1x1 Conv2D
    matching the teacher's width) and the teacher's: "mse" or "l1"."""
    s = jnp.asarray(student_feature if adapter is None else adapter(student_feature))
    t = jax.lax.stop_gradient(jnp.asarray(teacher_feature))
    if s.shape != t.shape:
        raise ValueError(f"feature_loss: student feature {tuple(s.shape)} and teacher feature {tuple(t.shape)} "
                         f"differ; pass adapter= (e.g. nn.Linear or a 1x1 nn.Conv2D) mapping one onto the other")
    if kind == "mse":
        return jnp.mean((s - t) ** 2)
    if kind == "l1":
        return jnp.mean(jnp.abs(s - t))
    raise ValueError(f"kind={kind!r} must be 'mse' or 'l1'")


class Distiller(Layer):
    """student + frozen teacher: forward returns (student logits, teacher logits).

    Give the optimizer only `distiller.student.parameters()`. With
    `pdx.Model(distiller)`, pass `DistillationLoss` as the loss.
    """

    def __init__(self, student: Layer, teacher: Layer):
        super().__init__()
        self.student, self.teacher = student, teacher
        teacher.eval()

    def forward(self, x):
        self.teacher.eval()
        return self.student(x), jax.lax.stop_gradient(self.teacher(x))

    def train(self):
        super().train()
        self.teacher.eval()
        return self


class DistillationLoss(Layer):
    """alpha * hard loss(student, label) + (1 - alpha) * soft_label_loss(student, teacher, T).

    Args:
      temperature: softmax temperature of the soft labels.
      alpha: weight of the hard-label loss.
      hard_loss: callable (logits, label) -> loss; default cross entropy.
    """

    def __init__(self, temperature: float = 4.0, alpha: float = 0.5, hard_loss=None):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha={alpha!r} must lie in [0, 1]")
        self._temperature, self._alpha = float(temperature), float(alpha)
        self._hard = hard_loss or F.cross_entropy

    def forward(self, student_logits, teacher_logits, label):
        hard = self._hard(student_logits, label)
        soft = soft_label_loss(student_logits, teacher_logits, self._temperature)
        return self._alpha * hard + (1.0 - self._alpha) * soft
