// deploy/kubernetes/, checked offline: every manifest validates against the Kubernetes API
// schemas (kubernetes-models: validators compiled from the Kubernetes OpenAPI definitions), the
// settings are ones idmint's configuration knows and accepts, secrets stay in the Secret, the
// ports are the configuration's defaults, the probes ask /readyz, /healthz and the gRPC health
// service, and the grace period covers the drain and the shutdown.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret, type ISecret } from 'kubernetes-models/v1/Secret';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { loadConfig } from '../../src/config.js';

const DIR = new URL('../../deploy/kubernetes/', import.meta.url);
const read = (f: string | URL) => readFileSync(f, 'utf8');

/** A model class of kubernetes-models per apiVersion and kind; validate() throws on a schema error. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'v1 ConfigMap': ConfigMap,
  'v1 Secret': Secret,
  'v1 Service': Service,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
};

interface Manifest {
  readonly file: string;
  readonly obj: { apiVersion: string; kind: string; metadata: { name: string } };
}

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const manifests: Manifest[] = files.flatMap((file) =>
  parseAllDocuments(read(new URL(file, DIR))).map((d) => {
    assert.deepEqual(d.errors, [], `${file} is valid YAML`);
    return { file, obj: d.toJS() as Manifest['obj'] };
  }),
);
const one = <T>(kind: string): T => {
  const m = manifests.filter((x) => x.obj.kind === kind);
  assert.equal(m.length, 1, `one ${kind}`);
  return m[0].obj as T;
};
const deployment = one<IDeployment>('Deployment');
const configMap = one<IConfigMap>('ConfigMap');
const secret = one<ISecret>('Secret');
const service = one<IService>('Service');
const pdb = one<IPodDisruptionBudget>('PodDisruptionBudget');
const pod = deployment.spec!.template.spec!;
const container = pod.containers.find((c) => c.name === 'idmint')!;

/** Throws with the schema's complaint when obj does not validate as its kind. */
function validate(obj: Manifest['obj']): void {
  const Model = MODELS[`${obj.apiVersion} ${obj.kind}`];
  assert.ok(Model, `no schema for ${obj.apiVersion} ${obj.kind}`);
  new Model(obj as never).validate();
}

/** The environment a pod gets: ConfigMap, Secret, then the container's own variables. */
function podEnv(): Record<string, string> {
  const env: Record<string, string> = { ...configMap.data, ...secret.stringData };
  for (const e of container.env ?? [])
    env[e.name] =
      e.value ??
      `${e.name.toLowerCase()}-from-${e.valueFrom?.fieldRef?.fieldPath ?? 'elsewhere'}`.replace(/[^a-z0-9-]/g, '-');
  return env;
}

describe('deploy/kubernetes', () => {
  it('has a Deployment, Service, PodDisruptionBudget, ConfigMap and Secret, all applied by kustomization.yaml', () => {
    assert.deepEqual(manifests.map((m) => m.obj.kind).sort(), [
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Secret',
      'Service',
    ]);
    const kustomization = parseAllDocuments(read(new URL('kustomization.yaml', DIR)))[0].toJS() as {
      resources: string[];
    };
    assert.deepEqual([...kustomization.resources].sort(), [...files].sort());
  });

  it('validates against the Kubernetes API schemas', () => {
    for (const m of manifests)
      assert.doesNotThrow(() => validate(m.obj), `${m.file}: ${m.obj.kind} ${m.obj.metadata.name}`);
  });

  it('the schemas refuse broken manifests (the check can fail)', () => {
    const broken = (edit: (d: IDeployment) => void) => {
      const d = structuredClone(deployment);
      edit(d);
      return d as unknown as Manifest['obj'];
    };
    assert.throws(() => validate(broken((d) => Object.assign(d.spec!, { replicas: 'three' }))), /integer/);
    assert.throws(
      () =>
        validate(
          broken((d) => Object.assign(d.spec!.template.spec!.containers[0].ports![0], { containerPort: '8080' })),
        ),
      /integer/,
    );
    assert.throws(() => validate(broken((d) => delete (d.spec as Partial<typeof d.spec>)!.selector)), /selector/);
    assert.throws(
      () =>
        validate(
          broken((d) => Object.assign(d.spec!.template.spec!.containers[0].startupProbe!.grpc!, { port: 'grpc' })),
        ),
      /integer/,
    );
  });

  it('sets only variables idmint reads, documented, with values its configuration accepts', () => {
    const source = read(new URL('../../src/config.ts', import.meta.url));
    const documented = read(new URL('../../docs/CONFIG.md', import.meta.url));
    const env = podEnv();
    for (const name of Object.keys(env)) {
      assert.ok(source.includes(`env.${name}`) || source.includes(`'${name}'`), `${name} is read in src/config.ts`);
      assert.match(documented, new RegExp(`\\| \`${name}\` \\|`), `${name} is documented in docs/CONFIG.md`);
    }
    const config = loadConfig(env);
    assert.equal(config.adminTokenGenerated, false, 'the admin token is set');
    assert.equal(config.host, '0.0.0.0', 'listens on the pod address');
  });

  it('keeps credentials in the Secret and settings in the ConfigMap', () => {
    assert.deepEqual(Object.keys(secret.stringData ?? {}).sort(), ['ADMIN_TOKEN', 'MYSQL_URL']);
    assert.ok(new URL(secret.stringData!.MYSQL_URL).password, 'MYSQL_URL carries the password');
    for (const k of Object.keys(configMap.data ?? {}))
      assert.doesNotMatch(k, /TOKEN|PASSWORD|MYSQL_URL/, `${k} belongs in the Secret`);
    assert.ok(!/:[^/@]+@/.test(configMap.data?.REDIS_URL ?? ''), 'no Redis password in the ConfigMap');
    const refs = (container.envFrom ?? []).map((e) => e.configMapRef?.name ?? e.secretRef?.name);
    assert.deepEqual(refs, [configMap.metadata!.name, secret.metadata!.name]);
  });

  it('uses the configuration default ports, in the container, the ConfigMap and the Service', () => {
    const defaults = loadConfig({});
    const want = { http: [defaults.port, 'TCP'], udp: [defaults.udpPort, 'UDP'], grpc: [defaults.grpcPort, 'TCP'] };
    assert.deepEqual(Object.fromEntries(container.ports!.map((p) => [p.name, [p.containerPort, p.protocol]])), want);
    const config = loadConfig(podEnv());
    assert.deepEqual(
      [config.port, config.udpPort, config.grpcPort],
      [defaults.port, defaults.udpPort, defaults.grpcPort],
    );
    assert.deepEqual(Object.fromEntries(service.spec!.ports!.map((p) => [p.name, [p.port, p.protocol]])), want);
    for (const p of service.spec!.ports!)
      assert.equal(p.targetPort, p.name, `${p.name}: targets the container port by name`);
  });

  it('selects the pods it runs, in the Service and the PodDisruptionBudget', () => {
    const labels = deployment.spec!.template.metadata!.labels!;
    for (const [k, v] of Object.entries(deployment.spec!.selector.matchLabels!)) assert.equal(labels[k], v);
    for (const [k, v] of Object.entries(service.spec!.selector!)) assert.equal(labels[k], v);
    for (const [k, v] of Object.entries(pdb.spec!.selector!.matchLabels!)) assert.equal(labels[k], v);
    assert.ok(pdb.spec!.maxUnavailable !== undefined || pdb.spec!.minAvailable !== undefined);
  });

  it('probes readiness on /readyz, liveness on /healthz, and the gRPC health service on the gRPC port', () => {
    const config = loadConfig(podEnv());
    const port = (p: string | number | undefined) =>
      typeof p === 'number' ? p : container.ports!.find((x) => x.name === p)?.containerPort;
    assert.equal(container.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(port(container.readinessProbe?.httpGet?.port), config.port);
    assert.equal(container.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(port(container.livenessProbe?.httpGet?.port), config.port);
    const grpcProbes = [container.startupProbe, container.readinessProbe, container.livenessProbe].filter(
      (p) => p?.grpc,
    );
    assert.equal(grpcProbes.length, 1, 'one probe uses the gRPC health service');
    assert.equal(grpcProbes[0]!.grpc!.port, config.grpcPort);
    assert.ok(
      [undefined, '', 'idmint.v1.Ids'].includes(grpcProbes[0]!.grpc!.service),
      'a name the health service answers for',
    );
  });

  it('gives a stopping pod time to drain and shut down, without a preStop hook', () => {
    const config = loadConfig(podEnv());
    assert.ok(config.shutdownDrainMs >= 5000, 'drains long enough for endpoint removal to propagate');
    assert.ok(
      pod.terminationGracePeriodSeconds! * 1000 > config.shutdownDrainMs + config.shutdownTimeoutMs,
      `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} s is not above SHUTDOWN_DRAIN_MS + SHUTDOWN_TIMEOUT_MS`,
    );
    assert.equal(container.lifecycle?.preStop, undefined);
  });

  it('sets resource requests and limits', () => {
    const r = container.resources!;
    for (const k of ['cpu', 'memory']) {
      assert.ok(r.requests?.[k], `requests.${k}`);
      assert.ok(r.limits?.[k], `limits.${k}`);
    }
  });
});
