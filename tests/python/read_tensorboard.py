"""Reads a TensorBoard event file as TensorBoard would, independently of dptrain's own code.

Each TFRecord frame's two masked CRC-32Cs are checked with python3-crc32c, and each record is
parsed by Google's protobuf library (python3-protobuf) against the Event, Summary, SummaryMetadata
and TensorProto messages, declared here from TensorBoard's event.proto, summary.proto and
tensor.proto (field numbers as there). Prints JSON: the file version, every scalar as
[step, value, wall_time] per tag in file order, every text as [step, text] per tag, the steps of
each hparams plugin record per tag, and the number of records. Exits 1, saying why, at the first bad frame or record.

    python3 read_tensorboard.py EVENT_FILE
"""
import json
import struct
import sys

import crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def field(message, name, number, kind, type_name=None, repeated=False):
    f = message.field.add(name=name, number=number, type=kind)
    f.label = F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
    if type_name:
        f.type_name = type_name


def event_class():
    proto = descriptor_pb2.FileDescriptorProto(name="tb_event.proto", package="tb",
                                               syntax="proto3")
    shape = proto.message_type.add(name="TensorShapeProto")
    dim = shape.nested_type.add(name="Dim")
    field(dim, "size", 1, F.TYPE_INT64)
    field(dim, "name", 2, F.TYPE_STRING)
    field(shape, "dim", 2, F.TYPE_MESSAGE, ".tb.TensorShapeProto.Dim", repeated=True)
    field(shape, "unknown_rank", 3, F.TYPE_BOOL)
    tensor = proto.message_type.add(name="TensorProto")
    field(tensor, "dtype", 1, F.TYPE_INT32)
    field(tensor, "tensor_shape", 2, F.TYPE_MESSAGE, ".tb.TensorShapeProto")
    field(tensor, "string_val", 8, F.TYPE_BYTES, repeated=True)
    plugin = proto.message_type.add(name="PluginData")
    field(plugin, "plugin_name", 1, F.TYPE_STRING)
    field(plugin, "content", 2, F.TYPE_BYTES)
    metadata = proto.message_type.add(name="SummaryMetadata")
    field(metadata, "plugin_data", 1, F.TYPE_MESSAGE, ".tb.PluginData")
    field(metadata, "display_name", 2, F.TYPE_STRING)
    summary = proto.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    field(value, "tag", 1, F.TYPE_STRING)
    field(value, "simple_value", 2, F.TYPE_FLOAT)
    field(value, "tensor", 8, F.TYPE_MESSAGE, ".tb.TensorProto")
    field(value, "metadata", 9, F.TYPE_MESSAGE, ".tb.SummaryMetadata")
    field(summary, "value", 1, F.TYPE_MESSAGE, ".tb.Summary.Value", repeated=True)
    event = proto.message_type.add(name="Event")
    field(event, "wall_time", 1, F.TYPE_DOUBLE)
    field(event, "step", 2, F.TYPE_INT64)
    field(event, "file_version", 3, F.TYPE_STRING)
    field(event, "summary", 5, F.TYPE_MESSAGE, ".tb.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("tb.Event"))


def masked(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frames(data):
    at = 0
    while at < len(data):
        if len(data) - at < 12:
            sys.exit(f"record at byte {at}: {len(data) - at} bytes, too few for a header")
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        if length_crc != masked(data[at:at + 8]):
            sys.exit(f"record at byte {at}: the length's CRC is wrong")
        end = at + 12 + length
        if end + 4 > len(data):
            sys.exit(f"record at byte {at}: cut short")
        (data_crc,) = struct.unpack_from("<I", data, end)
        if data_crc != masked(data[at + 12:end]):
            sys.exit(f"record at byte {at}: the data's CRC is wrong")
        yield data[at + 12:end]
        at = end + 4


def main(path):
    Event = event_class()
    out = {"file_version": None, "records": 0, "scalars": {}, "texts": {}, "hparams": {}}
    with open(path, "rb") as f:
        data = f.read()
    for record in frames(data):
        event = Event()
        event.ParseFromString(record)
        out["records"] += 1
        if event.file_version:
            out["file_version"] = event.file_version
            continue
        for v in event.summary.value:
            if v.metadata.plugin_data.plugin_name == "hparams":
                # The HParams view's records: their content is the plugin's, counted here.
                out["hparams"].setdefault(v.tag, []).append(event.step)
            elif v.HasField("tensor"):
                assert v.metadata.plugin_data.plugin_name == "text", v.tag
                assert len(v.tensor.string_val) == 1 and v.tensor.dtype == 7, v.tag
                text = v.tensor.string_val[0].decode("utf-8")
                out["texts"].setdefault(v.tag, []).append([event.step, text])
            else:
                out["scalars"].setdefault(v.tag, []).append(
                    [event.step, v.simple_value, event.wall_time])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
