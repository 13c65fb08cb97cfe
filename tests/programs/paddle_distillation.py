"""Knowledge distillation on scikit-learn's digits: a teacher trained first,
then frozen (eval() and stop_gradient) while a smaller student learns from
its temperature-softened outputs with F.kl_div plus the hard-label
cross-entropy. The student's layers start from numpy weights through
ParamAttr(initializer=Assign(...)); accuracy through paddle.metric.Accuracy."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from sklearn.datasets import load_digits

paddle.set_device("cpu")
T, ALPHA = 3.0, 0.7
digits = load_digits()
x_all = paddle.to_tensor((digits.data / 16.0).astype("float32"))
y_all = paddle.to_tensor(digits.target.astype("int64"))
x_train, y_train, x_test, y_test = x_all[:1000], y_all[:1000], x_all[1000:1400], y_all[1000:1400]
init = np.random.RandomState(23)


def assign_linear(fan_in, fan_out, scale):
    w = paddle.ParamAttr(initializer=nn.initializer.Assign((init.randn(fan_in, fan_out) * scale).astype("float32")))
    b = paddle.ParamAttr(initializer=nn.initializer.Constant(0.01))
    return nn.Linear(fan_in, fan_out, weight_attr=w, bias_attr=b)


class Teacher(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(assign_linear(64, 128, 0.1), nn.ReLU(), assign_linear(128, 10, 0.1))

    def forward(self, x):
        return self.net(x)


class Student(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = assign_linear(64, 16, 0.2)
        self.fc2 = assign_linear(16, 10, 0.2)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def teacher_loss(teacher, x, y):
    return F.cross_entropy(teacher(x), y)


def distill_loss(student, teacher, x, y):
    with paddle.no_grad():
        soft_targets = F.softmax(teacher(x) / T, axis=-1)
    logits = student(x)
    soft = F.kl_div(F.log_softmax(logits / T, axis=-1), soft_targets, reduction="batchmean") * T * T
    return ALPHA * soft + (1 - ALPHA) * F.cross_entropy(logits, y)


teacher = Teacher()
opt_t = paddle.optimizer.Adam(learning_rate=0.01, parameters=teacher.parameters())
teacher_losses = []
for epoch in range(3):
    for i in range(0, 1000, 100):
        loss = teacher_loss(teacher, x_train[i:i + 100], y_train[i:i + 100])
        loss.backward()
        opt_t.step()
        opt_t.clear_grad()
        teacher_losses.append(float(loss))
teacher.eval()
for p in teacher.parameters():
    p.stop_gradient = True

student = Student()
opt_s = paddle.optimizer.Adam(learning_rate=0.02, parameters=student.parameters())
student_losses = []
for epoch in range(3):
    for i in range(0, 1000, 100):
        loss = distill_loss(student, teacher, x_train[i:i + 100], y_train[i:i + 100])
        loss.backward()
        opt_s.step()
        opt_s.clear_grad()
        student_losses.append(float(loss))

metric = paddle.metric.Accuracy(topk=(1, 2))
student.eval()
with paddle.no_grad():
    for i in range(0, 400, 100):
        correct = metric.compute(student(x_test[i:i + 100]), y_test[i:i + 100].unsqueeze(-1))
        metric.update(correct)
    teacher_acc = paddle.metric.accuracy(teacher(x_test), y_test.unsqueeze(-1))
print(json.dumps({
    "teacher_losses": teacher_losses,
    "student_losses": student_losses,
    "student_acc": metric.accumulate(),
    "metric_name": metric.name(),
    "teacher_acc": float(teacher_acc),
    "student_params": sum(int(np.prod(p.shape)) for p in student.parameters()),
}))
