"""Small drawing helpers shared by the explorers."""

from __future__ import annotations


def show_grid(image, ax, grid):
    """Put ``grid`` into a heatmap and fit the axes to its shape (it may change with a slider)."""
    image.set_data(grid)
    image.set_extent((-0.5, grid.shape[1] - 0.5, grid.shape[0] - 0.5, -0.5))
    ax.set_xlim(-0.5, grid.shape[1] - 0.5)
    ax.set_ylim(grid.shape[0] - 0.5, -0.5)
