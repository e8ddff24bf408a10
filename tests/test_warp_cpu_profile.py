"""benchmarks/warp_cpu_profile.py's reading of a Warp CPU build: function names from C++ symbols, Python statements
from the generated C++, the call graph and the phase an out-of-line function belongs to (hand-written cases)."""

from __future__ import annotations

from benchmark_loader import load_benchmark

profile = load_benchmark("warp_cpu_profile")

GENERATED = """
static bool list_near_faces_0(
    SimState_94c382dc* var_s,
    wp::int32 var_a)
{
    // forward
    // def list_near_faces(s: SimStateRef, a: int):                                <L 78>
    // count = int(0)                                                              <L 83>
    var_1 = wp::int(var_0);
    var_2 = wp::mesh_query_aabb(var_3, var_4, var_5);
    return var_9;
}
static WP_NOINLINE void update_mesh_manifolds_0(
    SimState_94c382dc* var_s)
{
    // clear_mesh_manifolds(s, a, c)                                               <L 410>
    clear_mesh_manifolds_0(var_s, var_a, var_c);
}
static void car_tick_end_0(
    SimState_94c382dc* var_s)
{
    car_arena_box_contact_0(var_s, var_a, var_c);
}
static void car_arena_box_contact_0(
    SimState_94c382dc* var_s)
{
    update_mesh_manifolds_0(var_s, var_a, var_c);
    var_7 = list_near_faces_0(var_s, var_a);
}
static void car_tick_start_0(
    SimState_94c382dc* var_s)
{
    var_7 = list_near_faces_0(var_s, var_a);
}
static void adj_car_tick_start_0(
    SimState_94c382dc* var_s)
{
    update_mesh_manifolds_0(var_s, var_a, var_c);
}
"""


def test_function_names_from_symbols() -> None:
    assert profile.warp_name("cast_wheels_0") == "cast_wheels"
    assert profile.warp_name("_ZL12solve_pair_018PairState_ff25070021PairContacts_afc0c9fc") == "solve_pair"
    assert profile.warp_name("_ZL23update_mesh_manifolds_0P17SimState_94c382dcii") == "update_mesh_manifolds"
    assert profile.warp_name("step_kernel_a08bf137_cpu_forward") == "step_kernel"
    assert profile.warp_name("_ZL39step_kernel_a08bf137_cpu_kernel_forwardILb0EEvN2wp15launch") == "step_kernel"
    assert profile.warp_name("quat_rotate<float>") == "wp.quat_rotate"
    assert profile.warp_name("mesh_query_next_impl<wp::AabbNodeTest, wp::AabbPrimitiveTest, false>") == (
        "wp.mesh_query_next_impl"
    )


def test_each_cpp_line_maps_to_the_python_statement_above_it() -> None:
    lines = profile.python_lines(GENERATED)
    cpp = GENERATED.splitlines()
    assert lines[cpp.index("    var_1 = wp::int(var_0);")] == "L83 count = int(0)"
    assert lines[cpp.index("    var_2 = wp::mesh_query_aabb(var_3, var_4, var_5);")] == "L83 count = int(0)"
    assert lines[cpp.index("    clear_mesh_manifolds_0(var_s, var_a, var_c);")] == "L410 clear_mesh_manifolds(s, a, c)"
    assert lines[0] == ""


def test_call_graph_and_phase_of_out_of_line_functions() -> None:
    graph = profile.call_graph(GENERATED)
    assert graph["car_arena_box_contact"] == {"update_mesh_manifolds", "list_near_faces"}
    assert graph["update_mesh_manifolds"] == {"clear_mesh_manifolds"}
    assert "adj_car_tick_start" not in graph  # adjoint code is not the forward step's
    assert profile.phase_of(graph, "update_mesh_manifolds") == "car_tick_end"
    # Reached from two phases: no single phase to charge it to.
    assert profile.phase_of(graph, "list_near_faces") == "several"
