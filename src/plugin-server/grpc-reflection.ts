import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import type { Server } from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { fileDescriptorSetBase64, healthFileDescriptorSetBase64 } from '../shared/proto.js';

/** The FileDescriptorProtos of a serialized FileDescriptorSet, each re-serialized on its own. */
function files(setBase64: string): Buffer[] {
  const set = fromBinary(FileDescriptorSetSchema, Buffer.from(setBase64, 'base64'));
  return set.file.map((f) => Buffer.from(toBinary(FileDescriptorProtoSchema, f)));
}

/**
 * Server reflection (v1 and v1alpha) for AgentService and grpc.health.v1, from the descriptors buf compiled
 * (scripts/proto-gen.sh). @grpc/reflection only needs `fileDescriptorProtos`; handing it the package definition
 * proto-loader builds would serve descriptors protobufjs regenerated, whose map entries other implementations
 * reject (grpcurl: "is an invalid map: message and field must be declared in the same scope").
 */
export function addReflection(server: Server): void {
  const fileDescriptorProtos = [...files(fileDescriptorSetBase64), ...files(healthFileDescriptorSetBase64)];
  // Only `fileDescriptorProtos` of each entry is read (ReflectionV1Implementation's constructor), so one entry that
  // carries every file stands in for proto-loader's per-type definitions.
  const pkg = { descriptors: { fileDescriptorProtos } } as unknown as PackageDefinition;
  new ReflectionService(pkg).addToServer(server);
}
