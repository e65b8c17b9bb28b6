// Tile data operations, forward and adjoint.
#pragma once
#include "tile_ops.h"
