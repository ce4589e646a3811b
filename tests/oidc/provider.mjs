// A real OpenID provider (the npm package oidc-provider) for `tests/it/sso.rs`:
// test users with groups, the device flow, short ID tokens (so every command
// refreshes), and test-only routes under /test/ to approve a device code, change a
// user's groups and revoke a user's sign-ins by script. The authorization code
// flow requires PKCE (S256), and its login and consent are given by script: the
// account `/test/login` names signs in at the next interaction.
//
// Usage: node provider.mjs CLIENT_ID   (NODE_PATH names oidc-provider's node_modules)
// Prints `listening http://127.0.0.1:PORT` once it serves; stops when stdin closes.
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH || '.', 'x.js'));
const { default: Provider } = await import(require.resolve('oidc-provider'));

const clientId = process.argv[2] || 'toolgate-cli';
const groups = { alice: ['eng-platform', 'contractors'], bob: ['data'] };

const server = http.createServer();
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    token_endpoint_auth_method: 'none',
    grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token', 'authorization_code'],
    response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback'],
    application_type: 'native',
  }],
  features: {
    devInteractions: { enabled: false },
    deviceFlow: { enabled: true },
    revocation: { enabled: true },
  },
  // every authorization request must carry an S256 challenge, checked at the token
  // endpoint against the verifier
  pkce: { required: () => true, methods: ['S256'] },
  scopes: ['openid', 'offline_access', 'profile', 'groups'],
  claims: { openid: ['sub'], profile: ['name'], groups: ['groups'] },
  // scope claims in the ID token itself: toolgate reads the ID token
  conformIdTokenClaims: false,
  // shorter than the client's refresh margin: every command refreshes, so a change
  // at the provider shows at the next one without waiting
  ttl: { IdToken: 30, AccessToken: 30, DeviceCode: 600, RefreshToken: 3600, Grant: 3600 },
  issueRefreshToken: async () => true,
  async findAccount(ctx, sub) {
    if (!groups[sub]) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, name: sub, groups: groups[sub] };
      },
    };
  },
});

async function body(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text ? JSON.parse(text) : {};
}

// the device code's user approves as `account`, as the consent page would record it
async function approve({ user_code: userCode, account }) {
  const code = await provider.DeviceCode.findByUserCode(userCode.replace(/[^A-Z]/gi, '').toUpperCase());
  if (!code) throw new Error(`no device code ${userCode}`);
  const scope = code.params.scope;
  const grant = new provider.Grant({ accountId: account, clientId: code.clientId });
  grant.addOIDCScope(scope);
  Object.assign(code, {
    accountId: account,
    grantId: await grant.save(),
    authTime: Math.floor(Date.now() / 1000),
    scope,
  });
  await code.save();
}

// the browser's login and consent, given as the account `/test/login` named
let nextLogin = null;
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (!nextLogin) throw new Error('no account to sign in: POST /test/login first');
  const grant = new provider.Grant({ accountId: nextLogin, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId: nextLogin }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

const callback = provider.callback();
server.on('request', async (req, res) => {
  if (req.url.startsWith('/interaction/')) {
    try {
      return await interaction(req, res);
    } catch (e) {
      return res.writeHead(400, { 'content-type': 'text/plain' }).end(String(e.message));
    }
  }
  if (!req.url.startsWith('/test/')) return callback(req, res);
  try {
    const args = await body(req);
    if (req.url === '/test/approve') await approve(args);
    else if (req.url === '/test/groups') groups[args.account] = args.groups;
    else if (req.url === '/test/login') nextLogin = args.account;
    // the account is gone: every refresh of its sign-ins is refused
    else if (req.url === '/test/forget') delete groups[args.account];
    else throw new Error(`no route ${req.url}`);
    res.writeHead(204).end();
  } catch (e) {
    res.writeHead(400, { 'content-type': 'text/plain' }).end(String(e.message));
  }
});

console.log(`listening ${issuer}`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
