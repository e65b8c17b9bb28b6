"""``wp.Launch``: a prepared kernel launch that can be re-run and re-parameterised."""

from __future__ import annotations

from . import launch as _launch


class Launch:
    """A kernel launch captured with ``wp.launch(..., record_cmd=True)``; run it with ``launch()``."""

    def __init__(self, kernel, device=None, adjoint=False, dim=1, inputs=(), outputs=(), adj_inputs=(), adj_outputs=()):
        self.kernel = kernel
        self.device = device
        self.adjoint = adjoint
        self.dim = dim
        self.params = list(inputs) + list(outputs)
        self.n_inputs = len(inputs)
        self.adj_params = list(adj_inputs) + list(adj_outputs)

    def set_dim(self, dim):
        self.dim = dim

    def set_param_at_index(self, index, value):
        self.params[index] = value

    def set_param_by_name(self, name, value):
        self.params[self.kernel.arg_names.index(name)] = value

    def set_params(self, values):
        self.params = list(values)

    def launch(self, stream=None):
        """Run the captured launch (the adjoint kernel if it was captured with ``adjoint=True``)."""
        n = self.n_inputs
        _launch.launch(
            self.kernel,
            self.dim,
            inputs=self.params[:n],
            outputs=self.params[n:],
            adj_inputs=self.adj_params[:n] if self.adjoint else (),
            adj_outputs=self.adj_params[n:] if self.adjoint else (),
            device=self.device,
            adjoint=self.adjoint,
        )
