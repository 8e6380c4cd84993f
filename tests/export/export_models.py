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


class Writes(nn.Module):
    """In-place writes through views: a bias computed in forward (Swin V2's
    qkv bias with its k part zeroed), `attn[:, 1:, 1:] += rel` (MViT's
    relative positions), assignments of a tensor and of a number, and a view
    taken before a write and read after it."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.rel = nn.Parameter(torch.zeros(4, 4))
        self.proj = nn.Linear(16, 16)

    def forward(self, x):                      # x [B, 5, 16]
        b = self.qkv.bias.clone()
        b[16:32].zero_()
        qkv = nn.functional.linear(x, self.qkv.weight, b)
        q, k, v = qkv.reshape(x.shape[0], 5, 3, 16).permute(2, 0, 1, 3)
        attn = q @ k.transpose(-2, -1)
        attn[:, 1:, 1:] += self.rel
        attn = attn.softmax(-1)
        y = attn @ v
        head = y[:, :2]                        # a view read after the writes below
        y[:, 0] = x[:, 0]
        y[:, :, :2] = 0.0
        return self.proj(y) + head.sum(1, keepdim=True)


class Recurrent(nn.Module):
    """One cell (a linear with a bias, a LayerNorm) applied three times, as
    RAFT's update block is: the calls after the first share all its
    parameters (tie_params)."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.cell = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.act = nn.ReLU()
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = self.inp(x)
        for _ in range(3):
            h = h + self.act(self.norm(self.cell(h)))
        return self.head(h)


class Grid(nn.Module):
    """A constant whose first size is the batch times the positions (RAFT's
    coordinate grid, torch.zeros(B * H * W, 2)) added to the flattened input."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 3)

    def forward(self, x):
        b, c, h, w = x.shape
        g = torch.zeros(b * h * w, c)
        y = x.permute(0, 2, 3, 1).reshape(b * h * w, c)
        return self.lin(y + g)


class Quantized(nn.Module):
    """A converted model's first module: PyTorch's quantized Quantize."""

    def __init__(self):
        super().__init__()
        import torch.ao.nn.quantized as nnq
        self.quant = nnq.Quantize(1.0, 0, torch.quint8)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.quant(self.lin(x))


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                 nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.net(x)


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)                  # a local until forward() returns: alive through self.conv
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNet(nn.Module):
    """A small U-Net in the layout of milesial/Pytorch-UNet's unet_model.py
    (DoubleConv, Down = MaxPool2d + DoubleConv, Up = ConvTranspose2d, cat,
    DoubleConv): its forward() keeps x1..x4 as locals until it returns, and
    Up.forward() its upsampled x1 through the DoubleConv after the cat."""

    def __init__(self, cin=3, classes=2, w=8):
        super().__init__()
        self.inc = DoubleConv(cin, w)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(w, 2 * w))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(2 * w, 4 * w))
        self.down3 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(4 * w, 8 * w))
        self.up1 = Up(8 * w, 4 * w)
        self.up2 = Up(4 * w, 2 * w)
        self.up3 = Up(2 * w, w)
        self.outc = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x = self.up1(x4, x3)
        x = self.up2(x, x2)
        x = self.up3(x, x1)
        return self.outc(x)
