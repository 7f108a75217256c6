"""RL906: a fine-tuning loop adds the loss, graph and all, to its running total.

Shaped after the PyTorch FAQ's "accumulating history across your training loop" and
open-instruct's reward-model trainer: the total's graph reaches every step's graph, whose
gradient-accumulation nodes hold the model's parameters - the report kept after the run
keeps the weights after the model is unloaded.
"""
import torch


def penalty(model):
    return sum(p.float().pow(2).mean() for p in model.parameters())


def fine_tune(model, steps):
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    total_loss = 0
    for _ in range(steps):
        loss = penalty(model)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        total_loss += loss
    return total_loss / steps


class Session:
    def __init__(self, model):
        self.model = model
        self.mean_loss = None

    def run(self):
        self.mean_loss = fine_tune(self.model, 3)

    def unload(self):
        del self.model


def lifecycle(ctx):
    session = Session(ctx.build_model())
    ctx.expect_freed(session.model, "model")
    session.run()
    session.unload()
    ctx.keep(session)  # the session, and the loss it reports, live on
