"""The shipped CMake package: a downstream project finds and links hipdnn_ep_runtime::runtime."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import hipdnn_ep_runtime as rt
import pytest

CONSUMER_CMAKE = """
cmake_minimum_required(VERSION 3.26)
project(consumer C)
find_package(hipdnn_ep_runtime {major} CONFIG REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE hipdnn_ep_runtime::runtime)
"""

CONSUMER_MAIN = r"""
#include <stdio.h>
#include "hipdnn_ep/runtime_abi.h"
int main(void) {
  hipdnn_ep_state_t* state = 0;
  if (hipdnn_ep_state_create(0, &state) != HIPDNN_EP_STATUS_OK) return 1;
  void* p = 0;
  if (hipdnn_ep_malloc(state, 100, &p) != HIPDNN_EP_STATUS_OK) return 2;
  if (hipdnn_ep_free(state, p) != HIPDNN_EP_STATUS_OK) return 3;
  printf("abi %u\n", hipdnn_ep_abi_version());
  return hipdnn_ep_state_destroy(state);
}
"""


def test_downstream_cmake_project_links_the_runtime(tmp_path: Path) -> None:
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    (tmp_path / "CMakeLists.txt").write_text(CONSUMER_CMAKE.format(major=rt.abi_version()[0]))
    (tmp_path / "main.c").write_text(CONSUMER_MAIN)
    build = tmp_path / "build"
    subprocess.run([cmake, "-S", str(tmp_path), "-B", str(build), f"-Dhipdnn_ep_runtime_DIR={rt.cmake_dir()}"],
                   check=True, capture_output=True)
    subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)
    major, minor = rt.abi_version()
    out = subprocess.run([str(build / "consumer")], check=True, capture_output=True, text=True).stdout
    assert out.strip() == f"abi {(major << 16) | minor}"
