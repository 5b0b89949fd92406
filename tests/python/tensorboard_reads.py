"""Reads a run folder's event files with TensorBoard's own code, the way `tensorboard --logdir`
shows them, so that the suite checks what a user sees and not only the file format
(read_tensorboard.py checks that, byte for byte, without TensorBoard).

Two readers, since TensorBoard has two paths to a scalar:
- "accumulator": event_accumulator.EventAccumulator, the classic reader, with every event kept
  (size guidance 0) and its purge of orphaned data on (its default: a step that goes back drops
  the later ones, as after a restart that did not cut its file).
- "provider": the data provider TensorBoard's web app reads through (plugin_event_multiplexer +
  data_compat, which turns a simple_value into the scalars plugin's tensor).

Prints JSON {"version": ..., "accumulator": {tag: [[step, value], ...]}, "provider": {...}}.

    .venv/bin/python tensorboard_reads.py RUN_FOLDER
"""
import json
import sys

from tensorboard import context, version
from tensorboard.backend.event_processing import data_provider, event_accumulator
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.data import provider as data_api
from tensorboard.plugins.scalar import metadata as scalar_metadata


def accumulator_scalars(run_dir):
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def provider_scalars(run_dir):
    multiplexer = plugin_event_multiplexer.EventMultiplexer(tensor_size_guidance={"scalars": 0})
    multiplexer.AddRun(run_dir, name="run")
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, run_dir)
    ctx = context.RequestContext()
    listed = provider.list_scalars(ctx, experiment_id="", plugin_name=scalar_metadata.PLUGIN_NAME)
    tags = sorted(listed.get("run", {}))
    read = provider.read_scalars(ctx, experiment_id="", plugin_name=scalar_metadata.PLUGIN_NAME,
                                 downsample=10**9,
                                 run_tag_filter=data_api.RunTagFilter(["run"], tags))
    return {tag: [[p.step, p.value] for p in points] for tag, points in read.get("run", {}).items()}


def main(run_dir):
    print(json.dumps({"version": version.VERSION, "accumulator": accumulator_scalars(run_dir),
                      "provider": provider_scalars(run_dir)}))


if __name__ == "__main__":
    main(sys.argv[1])
