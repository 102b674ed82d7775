// libtorch (through glog) defines a CHECK macro that aborts the process; Catch's CHECK must win.
// Include this instead of <catch2/catch.hpp> in tests that use torch, after the torch headers.
#pragma once

#include <torch/nn.h>

#undef CHECK
#include <catch2/catch.hpp>
