"""Reads a run folder's event files with TensorBoard's own code, every point kept (where the web
app keeps 1,000 a tag), so that the suite checks what a user sees and not only the file format
(read_tensorboard.py checks that, byte for byte, without TensorBoard).

Three readers, since TensorBoard has three paths to a scalar:
- "data_server": the Rust data server (tensorboard-data-server), which `tensorboard --logdir`
  starts by default (--load_fast=auto) and whose web app reads through it. Its reservoir drops
  the points at or after a step that comes again: a repeated step shows once.
- "provider": the Python data provider that TensorBoard falls back to without that server
  (plugin_event_multiplexer + data_compat, which turns a simple_value into the scalars plugin's
  tensor).
- "accumulator": event_accumulator.EventAccumulator, the classic reader. For files of version 2
  (dptrain's "brain.Event:2") neither Python reader purges anything: a repeated step shows twice.

Prints JSON {"version": ..., "file_version": ..., "data_server": {tag: [[step, value], ...]},
"provider": {...}, "accumulator": {...}, "texts": {tag: [[step, text], ...]}}, the texts as the
text plugin reads them through the Python data provider.

    .venv/bin/python tensorboard_reads.py RUN_FOLDER
"""
import json
import sys
import time

from tensorboard import context, version
from tensorboard.backend.event_processing import data_provider, event_accumulator
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.data import provider as data_api
from tensorboard.data import server_ingester
from tensorboard.util import grpc_util
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata


def accumulator_scalars(run_dir):
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    scalars = {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    return acc.file_version, scalars


def read_all_scalars(provider, ctx):
    """Every scalar of the folder's one run (named "run" or "."), by tag."""
    listed = provider.list_scalars(ctx, experiment_id="", plugin_name=scalar_metadata.PLUGIN_NAME)
    runs = sorted(listed)
    assert len(runs) <= 1, f"more than one run: {runs}"
    if not runs:
        return {}
    tags = sorted(listed[runs[0]])
    read = provider.read_scalars(ctx, experiment_id="", plugin_name=scalar_metadata.PLUGIN_NAME,
                                 downsample=10**9,
                                 run_tag_filter=data_api.RunTagFilter(runs, tags))
    return {tag: [[p.step, p.value] for p in points] for tag, points in read[runs[0]].items()}


def data_server_scalars(run_dir, expected_points):
    """The Rust data server loads in the background (--reload=once): read until it holds as many
    points as the Python reader found, or 60 s have passed."""
    ingester = server_ingester.SubprocessServerDataIngester(
        server_ingester.get_server_binary(), run_dir, reload_interval=0,
        channel_creds_type=grpc_util.ChannelCredsType.LOCAL, samples_per_plugin={"scalars": 0})
    ingester.start()
    ctx = context.RequestContext()
    deadline = time.monotonic() + 60
    while True:
        scalars = read_all_scalars(ingester.data_provider, ctx)
        if sum(map(len, scalars.values())) >= expected_points or time.monotonic() > deadline:
            return scalars
        time.sleep(0.2)


def read_all_texts(provider, ctx):
    """Every text record (the text plugin's string tensors) of the run, by tag: [[step, text]]."""
    listed = provider.list_tensors(ctx, experiment_id="", plugin_name=text_metadata.PLUGIN_NAME)
    if "run" not in listed:
        return {}
    read = provider.read_tensors(ctx, experiment_id="", plugin_name=text_metadata.PLUGIN_NAME,
                                 downsample=10**9,
                                 run_tag_filter=data_api.RunTagFilter(["run"], list(listed["run"])))
    return {tag: [[p.step, p.numpy.item().decode("utf-8")] for p in points]
            for tag, points in read["run"].items()}


def provider_reads(run_dir):
    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        tensor_size_guidance={"scalars": 0, text_metadata.PLUGIN_NAME: 0})
    multiplexer.AddRun(run_dir, name="run")
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, run_dir)
    ctx = context.RequestContext()
    return read_all_scalars(provider, ctx), read_all_texts(provider, ctx)


def main(run_dir):
    file_version, accumulator = accumulator_scalars(run_dir)
    provider, texts = provider_reads(run_dir)
    print(json.dumps({"version": version.VERSION, "file_version": file_version,
                      "accumulator": accumulator, "provider": provider, "texts": texts,
                      "data_server": data_server_scalars(
                          run_dir, sum(map(len, accumulator.values())))}))


if __name__ == "__main__":
    main(sys.argv[1])
