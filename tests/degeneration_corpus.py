"""Healthy model outputs in many languages and formats: the degeneration detectors must stay
silent on every one (tests/test_degeneration.py). Written for the tests; no downloads."""

from __future__ import annotations

HEALTHY = {
"french": """La ville s'est réveillée lentement ce matin, et les premiers commerçants ont ouvert leurs boutiques avant que le soleil ne dépasse les toits. Dans la rue principale, une vieille dame promenait son chien pendant que des enfants couraient vers l'école en riant. Le boulanger, qui travaille depuis des années dans le quartier, a expliqué que les habitants viennent surtout pour le pain frais et pour discuter un peu. Selon lui, la vie du quartier dépend de ces petites rencontres qui se répètent chaque jour, et il espère que les nouveaux arrivants prendront eux aussi l'habitude de passer le saluer.""",
"german": """Die Forscher haben in den vergangenen Monaten untersucht, wie sich der Klimawandel auf die Wälder in den Alpen auswirkt. Dabei stellten sie fest, dass viele Bäume in höheren Lagen besser wachsen als früher, während die Bestände in den Tälern unter der Trockenheit leiden. Nach Ansicht der Wissenschaftler ist es deshalb wichtig, die Wälder frühzeitig umzubauen und Arten zu pflanzen, die mit wärmeren Sommern zurechtkommen. Die Gemeinden in der Region wollen die Ergebnisse nutzen, um ihre Pläne für die nächsten Jahrzehnte anzupassen, und sie hoffen auf die Unterstützung des Landes.""",
"spanish": """El pequeño pueblo de la costa recibe cada verano a miles de turistas que buscan playas tranquilas y comida tradicional. Los pescadores salen al mar muy temprano y vuelven a media mañana con el pescado que después se vende en el mercado. Muchos vecinos dicen que el turismo ha traído trabajo, pero también temen que los precios de las casas sigan subiendo y que los jóvenes tengan que marcharse. Por eso el ayuntamiento ha decidido reunir a todos los grupos del pueblo para hablar sobre el futuro y buscar un equilibrio entre la economía y la vida de siempre.""",
"italian": """Il museo della città ha riaperto le sue sale dopo due anni di lavori, e la mostra dedicata ai pittori del Rinascimento ha attirato molti visitatori già nel primo fine settimana. Le opere sono state restaurate con cura e ora si possono vedere i colori originali, che per secoli erano rimasti nascosti sotto strati di polvere e vernice. Secondo la direttrice, il progetto è stato possibile grazie al sostegno di molte persone che hanno creduto nell'importanza della cultura per la comunità, e adesso il museo vuole organizzare anche laboratori per le scuole e per le famiglie.""",
"portuguese": """A biblioteca municipal começou um projeto para levar livros aos bairros mais afastados do centro da cidade. Todas as semanas, uma pequena carrinha cheia de livros visita escolas, praças e centros de saúde, onde as pessoas podem escolher o que querem ler e devolver na visita seguinte. Os responsáveis dizem que o número de leitores aumentou muito desde o início do projeto, sobretudo entre as crianças e os idosos. Agora a câmara quer comprar uma segunda carrinha para chegar a mais lugares e também pretende oferecer aulas de leitura para adultos.""",
"dutch": """De gemeente wil de komende jaren meer ruimte maken voor fietsers in het centrum van de stad. Daarvoor worden sommige straten autovrij en komen er nieuwe fietspaden langs de grachten. Volgens de wethouder is het de bedoeling dat mensen sneller en veiliger door de stad kunnen reizen, terwijl de lucht schoner wordt. Niet iedereen is enthousiast, want winkeliers zijn bang dat klanten met de auto wegblijven. De gemeente heeft daarom beloofd om samen met de ondernemers te zoeken naar oplossingen, zoals extra parkeerplaatsen aan de rand van de stad en goede verbindingen met de bus.""",
"swedish": """Under sommaren åker många familjer ut till skärgården för att bada, fiska och vara nära naturen. Det finns små stugor på nästan varje ö, och på kvällarna samlas man ofta vid bryggan för att äta tillsammans och titta på solnedgången. Många som bor i staden säger att tiden i skärgården är det som gör att de orkar med resten av året. Kommunen arbetar nu med att förbättra båttrafiken så att det blir lättare att resa mellan öarna, och man vill också se till att de som bor där året runt har tillgång till affärer och skolor.""",
"finnish": """Kesällä monet suomalaiset lähtevät mökille järven rannalle, jossa he saunovat, uivat ja kalastavat pitkien iltojen aikana. Mökkielämä on monelle tärkeä tapa levätä kiireisen työvuoden jälkeen, ja usein koko suku kokoontuu samaan paikkaan juhannuksena. Tutkijoiden mukaan luonnossa vietetty aika vähentää stressiä ja parantaa unta, minkä vuoksi he suosittelevat, että ihmiset liikkuisivat metsässä myös talvella. Kunnat ovat alkaneet rakentaa uusia polkuja ja laavuja, jotta retkeily olisi helpompaa kaikille, myös lapsiperheille ja ikääntyneille, jotka eivät ole tottuneet pitkiin matkoihin.""",
"turkish": """Şehrin eski mahallelerinde yaşayan insanlar, sabahları erkenden kalkıp fırından taze ekmek alırlar ve komşularıyla sohbet ederler. Son yıllarda bu mahallelere birçok yeni aile taşındı ve sokaklarda yeni kafeler açıldı. Bazı yaşlı sakinler, mahallenin eski havasının kaybolmasından endişe ettiklerini söylüyor, ancak gençler yeni dükkanların hayatı daha canlı hale getirdiğini düşünüyor. Belediye, tarihi evleri korumak ve aynı zamanda mahalleye yeni imkanlar sunmak için bir plan hazırladı. Bu planın önümüzdeki ay halka tanıtılması ve herkesin fikrini söyleyebileceği toplantılar düzenlenmesi bekleniyor.""",
"polish": """Mieszkańcy małego miasteczka na południu kraju od lat starają się o budowę nowej drogi, która połączyłaby ich z większym miastem. Obecnie podróż do pracy zajmuje wielu osobom ponad godzinę, a zimą, gdy spadnie śnieg, bywa jeszcze dłuższa. Władze regionu obiecały, że prace ruszą w przyszłym roku, jeśli uda się zdobyć pieniądze z funduszy europejskich. Burmistrz podkreśla, że nowa droga nie tylko ułatwi codzienne dojazdy, ale także przyciągnie inwestorów i pomoże zatrzymać młodych ludzi, którzy coraz częściej wyjeżdżają w poszukiwaniu pracy i lepszych warunków życia.""",
"indonesian": """Setiap pagi, pasar tradisional di pusat kota sudah ramai oleh pedagang dan pembeli yang datang dari berbagai desa di sekitarnya. Mereka menjual sayur, buah, ikan, dan rempah-rempah yang masih segar, sementara para pembeli menawar harga dengan ramah. Banyak warga mengatakan bahwa mereka lebih suka berbelanja di pasar karena bisa bertemu langsung dengan petani dan mengetahui asal barang yang mereka beli. Pemerintah kota berencana memperbaiki atap dan saluran air pasar tahun depan, agar para pedagang dapat berjualan dengan nyaman meskipun musim hujan tiba dan jumlah pengunjung terus bertambah.""",
"vietnamese": """Vào mỗi buổi sáng, người dân trong khu phố thường ra công viên để tập thể dục và trò chuyện với nhau trước khi đi làm. Những người lớn tuổi tập thái cực quyền, còn các bạn trẻ thì chạy bộ hoặc chơi cầu lông. Theo nhiều người, thói quen này giúp họ khỏe mạnh hơn và cảm thấy gần gũi với hàng xóm. Chính quyền địa phương đang có kế hoạch trồng thêm cây xanh và lắp đặt thêm ghế ngồi trong công viên, để mọi người có thể nghỉ ngơi thoải mái sau khi tập luyện và trẻ em có thêm chỗ vui chơi an toàn.""",
"russian": """Жители небольшого северного города каждую зиму устраивают праздник, на который приезжают гости из разных районов страны. На главной площади строят ледяные фигуры, а вечером зажигают огни и играет музыка. Организаторы говорят, что праздник помогает городу привлекать туристов и поддерживать местных мастеров, которые продают свои изделия на ярмарке. В этом году планируется добавить новые конкурсы для детей и выставку старых фотографий, чтобы рассказать о том, как жили люди в этих краях много лет назад.""",
"greek": """Το μικρό νησί δέχεται κάθε καλοκαίρι χιλιάδες επισκέπτες που αναζητούν ήσυχες παραλίες και παραδοσιακό φαγητό. Οι ψαράδες βγαίνουν στη θάλασσα πολύ νωρίς το πρωί και επιστρέφουν με φρέσκα ψάρια, τα οποία πωλούνται στις ταβέρνες του λιμανιού. Πολλοί κάτοικοι λένε ότι ο τουρισμός έφερε δουλειά, αλλά ανησυχούν για το νερό και για τα σκουπίδια που αυξάνονται κάθε χρόνο.""",
"japanese": """今日は朝から雨が降っていたので、家で本を読みながらゆっくり過ごしました。午後になると空が明るくなり、近くの公園まで散歩に出かけました。公園では子どもたちが水たまりで遊んでいて、とても楽しそうでした。帰りにスーパーで野菜と魚を買い、夕食には家族と一緒に鍋を作りました。最近はPythonの勉強も始めたので、夜は少しだけプログラムを書いて、新しいライブラリの使い方をGitHubで調べました。""",
"chinese": """今天早上我们在会议上讨论了新项目的计划。首先，大家介绍了各自负责的部分，然后一起确定了时间表和目标。项目将使用Python和PostgreSQL开发，并且需要在下个月之前完成第一个版本。经理提醒我们，要注意代码质量和测试覆盖率，同时也要及时更新文档。会议结束后，我和同事一起去吃午饭，聊了很多关于工作和生活的话题。""",
"korean": """오늘은 친구들과 함께 한강 공원에 가서 자전거를 탔습니다. 날씨가 맑고 바람이 시원해서 많은 사람들이 산책을 하거나 음식을 먹으며 시간을 보내고 있었습니다. 우리는 편의점에서 라면을 사서 강을 바라보며 먹었고, 저녁에는 근처 카페에서 이야기를 나누었습니다. 다음 주말에는 다시 만나서 영화를 보기로 약속했습니다.""",
"arabic": """يستيقظ سكان المدينة القديمة في الصباح الباكر ويتجهون إلى السوق لشراء الخبز والخضروات الطازجة. وتمتلئ الأزقة الضيقة بأصوات الباعة الذين ينادون على بضائعهم، بينما يجلس كبار السن في المقاهي لشرب الشاي وتبادل الأخبار. ويقول كثير من الزوار إن هذه الأجواء تمنحهم شعورا بالدفء والانتماء.""",
"hindi": """गाँव के लोग हर साल फसल कटने के बाद एक बड़ा मेला लगाते हैं, जिसमें आसपास के कई गाँवों से लोग आते हैं। मेले में बच्चों के लिए झूले होते हैं, महिलाएँ हाथ से बने कपड़े और गहने बेचती हैं, और शाम को लोक संगीत का कार्यक्रम होता है। बुजुर्गों का कहना है कि यह मेला लोगों को एक साथ लाता है और पुरानी परंपराओं को जीवित रखता है।""",
"science": """The free energy change ΔG of the reaction was measured at 298 K, and the α-helix content of the protein rose from 35% to 48% when the pH dropped below 6. Samples were filtered through 0.22 µm membranes, and each measurement was repeated three times. The β-sheet signal at 218 nm did not change, which suggests that the unfolding happens in the helical domains first. We estimated the dissociation constant Kd with a standard binding model and found it to be about 4.2 μM, in line with earlier reports that used isothermal titration calorimetry on the same construct.""",
"markdown": """## Installation

1. Create a virtual environment: `python -m venv .venv`
2. Activate it and install the package with `pip install -e .[dev]`
3. Run the tests with `pytest -q`

| Option | Default | Meaning |
|--------|---------|---------|
| `--llm-host` | `127.0.0.1` | where servers listen |
| `--llm-start-timeout` | `900` | seconds to wait for readiness |

> **Note:** the first run downloads the reference model (about 270 MB).
""",
"json": """{"id": "chatcmpl-8f3a9c2e", "object": "chat.completion", "created": 1732924800, "model": "smollm2-135m-instruct", "choices": [{"index": 0, "message": {"role": "assistant", "content": "The capital of France is Paris."}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 24, "completion_tokens": 8, "total_tokens": 32}, "system_fingerprint": "fp_44709d6fcb", "tags": ["geography", "europe", "capitals"], "scores": [0.98, 0.87, 0.65, 0.43], "ok": true}""",
"csv": "\n".join(f"{i},{n},{c},{p:.2f},{q}" for i, (n, c, p, q) in enumerate([
    ("apple", "fruit", 1.2, 40), ("banana", "fruit", 0.5, 120), ("carrot", "vegetable", 0.8, 75),
    ("salmon", "fish", 12.5, 10), ("rice", "grain", 2.1, 300), ("walnut", "nut", 9.9, 25),
    ("yoghurt", "dairy", 1.4, 60), ("spinach", "vegetable", 2.3, 33), ("lentils", "legume", 1.7, 80),
    ("cheddar", "dairy", 6.4, 18), ("oats", "grain", 1.1, 140), ("mango", "fruit", 1.9, 45)])),
"word_list": "\n".join("- " + w for w in """aardvark badger camel dingo eland ferret gazelle hyena ibex
jackal koala lemur meerkat narwhal ocelot panda quokka raccoon sloth tapir urial vicuna walrus
xerus yak zebra albatross bison cheetah dolphin emu flamingo gorilla heron iguana jaguar kangaroo
lynx manatee newt otter pelican quail rhino stork toucan viper wombat"""),
"one_per_line": "\n".join("""aardvark badger camel dingo eland ferret gazelle hyena ibex jackal koala lemur
meerkat narwhal ocelot panda quokka raccoon sloth tapir urial vicuna walrus xerus yak zebra
albatross bison cheetah dolphin emu flamingo gorilla heron iguana jaguar kangaroo lynx manatee
newt otter pelican quail rhino stork toucan viper wombat beaver coyote""".split()),
"hashes": "\n".join(f"{i:3d}  sha256:{h}" for i, h in enumerate([
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
    "fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13",
    "a4e624d686e03ed2767c0abd85c14426b0b1157d2ce81d27bb4fe4f6f01d688a",
    "3fc9b689459d738f8c88a3a48aa9e33542016b7a4052e001aaa536fca74813cb",
    "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35"])),
"uuids": "\n".join(["3f2504e0-4f89-11d3-9a0c-0305e82c3301", "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                    "123e4567-e89b-12d3-a456-426614174000", "c9bf9e57-1685-4c89-bafb-ff5af830be8a",
                    "550e8400-e29b-41d4-a716-446655440000", "f47ac10b-58cc-4372-a567-0e02b2c3d479",
                    "7d444840-9dc0-11d1-b245-5ffdce74fad2", "e902893a-9d22-3c7e-a7b8-d6e313b71d9f"]),
"urls": """See https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/managers/scheduler.py#L3231 and https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html?highlight=max_model_len#extra-parameters for the details; the issue is tracked at https://github.com/vllm-project/recipes/issues/857 and the benchmark data at https://huggingface.co/datasets/openai/gsm8k/resolve/main/main/test-00000-of-00001.parquet?download=true.""",
"translations": """Hello in several languages: French "bonjour", German "hallo", Russian "привет", Greek "γεια σας", Japanese "こんにちは", Chinese "你好", Korean "안녕하세요", Arabic "مرحبا", Hebrew "שלום", Hindi "नमस्ते", Thai "สวัสดี", Georgian "გამარჯობა", Armenian "բարեւ".""",
"rust": '''use std::collections::HashMap;

/// Counts how often each word occurs, ignoring case.
pub fn word_counts(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let key = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if !key.is_empty() {
            *counts.entry(key).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts_words() {
        let c = word_counts("The cat and the hat");
        assert_eq!(c["the"], 2);
        assert_eq!(c.get("dog"), None);
    }
}
''',
"javascript": '''const fetchUserProfile = async (userId, { signal } = {}) => {
  const response = await fetch(`/api/v2/users/${encodeURIComponent(userId)}?include=roles,teams`, { signal });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${response.statusText}`);
  const { data: { attributes, relationships } } = await response.json();
  return { ...attributes, roleIds: relationships?.roles?.data?.map((r) => r.id) ?? [], isAdmin: attributes.role === "admin" };
};
export default fetchUserProfile;
''',
}
