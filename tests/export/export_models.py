"""Small models the export tests import through the command (MODULE:NAME)."""

import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.fc = nn.Linear(4, width)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.cumsum(self.fc(x), 1)     # no memest type: the error names this line


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x)


class Branchy(nn.Module):
    """A branch on a tensor's value: fx cannot trace it (nor torch.export)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            return torch.relu(y)
        return y
