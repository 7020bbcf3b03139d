#!/usr/bin/env python3
"""Rebuilds the CSV fixtures here from the shared rocprofv3 JSON sample.

908_kernel_trace.csv: the first dispatch of each of the first 10 distinct kernels,
written as rocprofv3 --kernel-trace --output-format csv writes it (quoted
strings, names full of commas and template arguments).
908_agent_info.csv: the sample's agents, in rocprofv3's agent_info.csv columns.

usage: python3 make_fixtures.py [path/to/rocprof__908_results.json.gz]
"""
import csv
import gzip
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
SAMPLE = HERE.parents[3] / "shared/traces/public/rocprof__908_results.json.gz"

KERNEL_COLUMNS = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id",
                  "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp",
                  "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
                  "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y",
                  "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
AGENT_COLUMNS = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cpu_Cores_Count", "Simd_Count",
                 "Wave_Front_Size", "Num_Xcc", "Cu_Count", "Gfx_Target_Version", "Gpu_Id",
                 "Name", "Vendor_Name", "Product_Name", "Model_Name"]


def write(path, header, rows):
    # rocprofv3 quotes strings and leaves numbers bare.
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main():
    tool = json.load(gzip.open(sys.argv[1] if len(sys.argv) > 1 else SAMPLE))
    tool = tool["rocprofiler-sdk-tool"][0]
    agents = {a["id"]["handle"]: a for a in tool["agents"]}
    symbols = {s["kernel_id"]: s for s in tool["kernel_symbols"]}
    rows, seen = [], set()
    for d in tool["buffer_records"]["kernel_dispatch"]:
        info = d["dispatch_info"]
        if info["kernel_id"] in seen:
            continue
        seen.add(info["kernel_id"])
        s = symbols[info["kernel_id"]]
        wg, grid = info["workgroup_size"], info["grid_size"]
        rows.append(["KERNEL_DISPATCH", "Agent %d" % agents[info["agent_id"]["handle"]]["logical_node_id"],
                     info["queue_id"]["handle"], d["stream_id"]["handle"], d["thread_id"],
                     info["dispatch_id"], info["kernel_id"], s["formatted_kernel_name"],
                     d["correlation_id"]["internal"], d["start_timestamp"], d["end_timestamp"],
                     info["group_segment_size"], info["private_segment_size"],
                     s["arch_vgpr_count"], s["accum_vgpr_count"], s["sgpr_count"],
                     wg["x"], wg["y"], wg["z"], grid["x"], grid["y"], grid["z"]])
        if len(rows) == 10:
            break
    write(HERE / "908_kernel_trace.csv", KERNEL_COLUMNS, rows)
    write(HERE / "908_agent_info.csv", AGENT_COLUMNS,
          [[a["node_id"], a["logical_node_id"], "GPU" if a["type"] == 2 else "CPU",
            a["cpu_cores_count"], a["simd_count"], a["wave_front_size"], a["num_xcc"],
            a["cu_count"], a["gfx_target_version"], a["gpu_id"], a["name"], a["vendor_name"],
            a["product_name"], a["model_name"]] for a in tool["agents"]])


if __name__ == "__main__":
    main()
